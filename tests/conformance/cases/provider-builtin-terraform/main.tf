data "terraform_remote_state" "x" {
  backend = "local"
  config = {
    path = "nothing.tfstate"
  }
}
