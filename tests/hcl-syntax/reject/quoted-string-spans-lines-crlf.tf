locals {
  a = "x
y"
}
