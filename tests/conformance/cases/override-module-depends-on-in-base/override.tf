module "m" {
  source = "./mod"
}
