# A shop's users, in Pandora's scenario format (docs/scenarios.md): each run
# logs a user in (the next row of users.csv), lists items with the token the
# login answered, reads the profile page and buys two of the items listed.
# The same flow in YAML is shop.yaml beside this file.

locals {
  json = {
    Content-Type = "application/json"
  }
}

variable_source "users" "file/csv" {
  file              = "ammo/scenario/users.csv"
  fields            = ["id", "name"]
  ignore_first_line = true
  delimiter         = ","
}

request "login" {
  method  = "POST"
  uri     = "/login"
  tag     = "auth"
  headers = local.json
  body    = <<EOF
{"user": "{{.request.login.preprocessor.user.name}}", "id": "{{.request.login.preprocessor.user.id}}"}
EOF

  preprocessor {
    mapping = {
      user = "source.users[next]"
    }
  }
  postprocessor "var/jsonpath" {
    mapping = {
      token = "$.token"
    }
  }
  postprocessor "var/header" {
    mapping = {
      session = "X-Session|lower"
    }
  }
  postprocessor "assert/response" {
    status_code = 200
    body        = ["token"]
  }
}

request "list" {
  uri = "/items"
  headers = merge(local.json, {
    Authorization = "Bearer {{.request.login.postprocessor.token}}"
  })

  postprocessor "var/jsonpath" {
    mapping = {
      items = "$.items"
    }
  }
  postprocessor "assert/response" {
    status_code = 200
  }
}

request "profile" {
  uri = "/profile"
  headers = {
    Authorization = "Bearer {{.request.login.postprocessor.token}}"
  }

  postprocessor "var/xpath" {
    mapping = {
      user = "//div[@class='user']"
    }
  }
}

request "buy" {
  method = "POST"
  uri    = "/buy/{{.request.buy.preprocessor.item}}"
  headers = {
    Authorization = "Bearer {{.request.login.postprocessor.token}}"
    X-User        = "{{.request.profile.postprocessor.user}}"
  }

  preprocessor {
    mapping = {
      item = "request.list.postprocessor.items[next]"
    }
  }
  postprocessor "assert/response" {
    status_code = 200
    headers = {
      X-Receipt = "R-"
    }
  }
}

scenario "buyer" {
  weight           = 3
  min_waiting_time = 50
  requests         = ["login", "list", "profile", "buy(2, 10)"]
}

scenario "browser" {
  weight   = 1
  requests = ["login", "list", "sleep(20)", "profile"]
}
