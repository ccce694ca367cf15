ephemeral "null_thing" "x" {}
resource "null_resource" "x" {}
