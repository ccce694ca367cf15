locals {
  h = <<EOT
literal $${not_interpolated} %%{not_a_directive}
EOT
  u = "\u00e9\t\"q\""
}
