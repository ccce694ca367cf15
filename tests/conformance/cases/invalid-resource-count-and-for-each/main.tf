resource "null_resource" "r" {
  count    = 1
  for_each = {}
}
