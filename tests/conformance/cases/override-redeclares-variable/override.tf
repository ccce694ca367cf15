variable "a" {
  default = 2
}
output "o" {
  value = 2
}
