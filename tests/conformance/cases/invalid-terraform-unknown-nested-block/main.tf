terraform {
  foo {}
}
