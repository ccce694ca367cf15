terraform {
  required_providers {
    null = { source = "hashicorp/null", version = "~> 2.1" }
  }
}

resource "null_resource" "x" {}
