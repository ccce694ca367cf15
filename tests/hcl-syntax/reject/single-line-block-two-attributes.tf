variable "a" { default = 1, type = number }
