check "c" {
  assert {
    condition     = true
    error_message = "Never."
  }
}
