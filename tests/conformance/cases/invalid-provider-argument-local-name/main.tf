resource "null_resource" "x" {
  provider = TEST
}
