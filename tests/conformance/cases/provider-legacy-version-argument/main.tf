provider "null" {
  version = "~> 2.1"
}
resource "null_resource" "x" {}
