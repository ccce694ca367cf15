provider "null" {
  depends_on = []
}
