variable "namespace" {
  default = "hashicorp"
}

terraform {
  required_providers {
    null = {
      source = "${var.namespace}/null"
    }
  }
}
