locals {
  x = true ? 1 :
  2
}
