variable "x" {
  default = 1
}
locals {
  x = 1
}
output "x" {
  value = 1
}
resource "null_resource" "x" {}
data "null_data_source" "x" {}
resource "null_resource" "y" {}
