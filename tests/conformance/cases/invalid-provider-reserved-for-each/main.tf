provider "null" {
  alias    = "each"
  for_each = toset(["a"])
}
