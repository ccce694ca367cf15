check "ok" {
  assert {
    condition     = null_resource.x.id != ""
    error_message = "never"
  }
}
resource "null_resource" "x" {}
