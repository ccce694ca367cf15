locals {
  a = "x
y"
}
