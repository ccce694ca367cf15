terraform {
  required_providers {
    null = {
      source = "a/b/c/d"
    }
  }
}
