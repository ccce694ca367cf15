terraform {
  required_providers {
    nope = {
      source = "acme/nope"
    }
  }
}
