terraform {
  required_providers {
    terraform = {
      source  = "terraform.io/builtin/terraform"
      version = "1.0"
    }
  }
}
