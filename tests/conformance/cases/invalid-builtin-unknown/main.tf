terraform {
  required_providers {
    foo = {
      source = "terraform.io/builtin/foo"
    }
  }
}
