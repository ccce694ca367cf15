# An object constructor may write a key twice; the last value wins (terraform validates it).
locals {
  o = {
    port     = 80
    protocol = "HTTP"
    port     = 80
  }
}
