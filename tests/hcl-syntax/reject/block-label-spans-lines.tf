resource "null_resource" "two
lines" {}
