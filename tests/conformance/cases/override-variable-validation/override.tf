variable "x" {
  validation {
    condition     = length(var.x) > 0
    error_message = "The x must not be empty."
  }
}
