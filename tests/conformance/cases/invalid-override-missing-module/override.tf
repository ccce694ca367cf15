module "m" {
  version = "1.0.0"
}
