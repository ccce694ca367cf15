removed {
  from = null_resource.gone
  lifecycle {
    destroy = false
  }
}
resource "null_resource" "x" {}
