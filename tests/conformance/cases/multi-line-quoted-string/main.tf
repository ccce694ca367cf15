terraform {
  required_providers {
    null = { source = "hashicorp/null", version = "~> 2.1" }
  }
}

locals {
  a = "x
y"
}
