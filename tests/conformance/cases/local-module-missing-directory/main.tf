module "a" {
  source = "./nope"
}
