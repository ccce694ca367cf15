module "a" {
  source = "./link"
}
