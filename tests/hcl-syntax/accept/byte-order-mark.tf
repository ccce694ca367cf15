# a file saved with a byte order mark
locals {
  a = 1
}
