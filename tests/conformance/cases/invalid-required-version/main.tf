terraform {
  required_version = ">= 5.0"
}
