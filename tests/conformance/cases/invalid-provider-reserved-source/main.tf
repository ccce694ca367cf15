provider "null" {
  source = "x"
}
