resource "null_resource" {}
