# For expressions ignore newlines, even inside an object constructor's braces.
variable "c" {
  default = true
}

locals {
  l = ["a", "b"]
  m = { for k in local.l : k => var.c ? "1" :
  "3" }
}
