import {
  to = null_resource.x
  id = "x"
}
resource "null_resource" "x" {}
