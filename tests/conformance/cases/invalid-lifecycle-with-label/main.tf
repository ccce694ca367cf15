resource "null_resource" "x" {
  lifecycle "y" {
    prevent_destroy = true
  }
}
