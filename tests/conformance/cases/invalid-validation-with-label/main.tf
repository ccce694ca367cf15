variable "v" {
  validation "x" {
    condition     = length(var.v) > 0
    error_message = "The v must not be empty."
  }
}
