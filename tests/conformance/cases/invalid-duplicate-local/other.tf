locals {
  a = 2
}
