variable "x" {
  type    = string
  default = "a"
}
