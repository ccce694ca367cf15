output "o" {
  precondition {
    condition     = true
    error_message = "Never."
  }
}
