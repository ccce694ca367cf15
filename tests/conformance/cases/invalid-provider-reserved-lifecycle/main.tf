provider "null" {
  lifecycle {}
}
