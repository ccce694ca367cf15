# Object constructor items are newline-sensitive: the newline ends the item.
locals {
  o = { a = true ? "1" :
  "3" }
}
