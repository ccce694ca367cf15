locals {
  x =
}
