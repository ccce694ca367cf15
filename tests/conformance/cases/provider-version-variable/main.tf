locals {
  null_version = "2.1.2"
}

terraform {
  required_providers {
    null = {
      source  = "hashicorp/null"
      version = local.null_version
    }
  }
}
