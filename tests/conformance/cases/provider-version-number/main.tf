terraform {
  required_providers {
    null = {
      source  = "hashicorp/null"
      version = 2
    }
  }
}
