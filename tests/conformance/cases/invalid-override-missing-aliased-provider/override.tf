provider "null" {
  alias = "b"
}
