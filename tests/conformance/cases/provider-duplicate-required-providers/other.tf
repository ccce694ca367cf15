terraform {
  required_providers {
    null = {
      source  = "hashicorp/null"
      version = ">= 2.0.0, ~> 2.1"
    }
  }
}
