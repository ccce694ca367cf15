/* block comment */
variable "a" { default = 1 }
// line comment
# hash comment
output "o" { value = var.a }
variable "e" {}
