locals {
  x = 1 == 1 ? "a" : 2 == 2 ? "b" : "c"
}
