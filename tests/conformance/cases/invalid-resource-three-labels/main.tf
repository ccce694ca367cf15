resource "null_resource" "x" "y" {}
