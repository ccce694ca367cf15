provider "null" {
  count = 1
}
