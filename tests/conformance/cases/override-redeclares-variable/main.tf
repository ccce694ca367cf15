variable "a" {
  default = 1
}
output "o" {
  value = var.a
}
