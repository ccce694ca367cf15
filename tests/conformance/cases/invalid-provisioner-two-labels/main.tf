resource "null_resource" "x" {
  provisioner "local-exec" "y" {
    command = "true"
  }
}
