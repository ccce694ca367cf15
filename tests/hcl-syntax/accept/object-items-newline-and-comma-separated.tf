locals {
  o = {
    a = 1, b = 2
    "c" = 3
    (local.k) = 4 # computed key
    d : 5
  }
  k = "x"
}
