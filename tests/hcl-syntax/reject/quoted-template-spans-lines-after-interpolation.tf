locals {
  a = "${var.x}
  tail"
}
