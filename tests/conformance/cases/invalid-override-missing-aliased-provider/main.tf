provider "null" {
  alias = "a"
}
